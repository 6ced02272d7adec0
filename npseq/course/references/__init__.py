"""The maths of the course's own exercises that is not part of npseq's public API: references kept with the
course, held to finite differences and torch in the tests. Each module here pairs a forward with its backward
for one set of :mod:`npseq.course.sets` (the set's exercises are graded against these backwards, and its
hand-out imports these forwards); none of it is exported from :mod:`npseq` or :mod:`npseq.functional`, and
no tutorial prints it, so that a learner has no worked copy to read. :mod:`~npseq.course.references.deep` is the
exception that holds no maths: npseq's own stacked and bidirectional layers, called with every weight named so
that each can be graded by name.
"""

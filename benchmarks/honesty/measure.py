"""How well the honesty check tells copies from a learner's own work, measured on the committed corpus.

    python benchmarks/honesty/measure.py              # the rates at npseq's threshold, and the curve
    python benchmarks/honesty/measure.py --list       # also every file's closest text and score

The corpus (``benchmarks/honesty/``):

* ``honest/<exercise>/<style>.py``: independent correct solutions, each written from its
  hand-out alone (loops, einsum, explicit Jacobians, other names and orders, the hints
  followed literally, short and long), every one graded correct by ``npseq grade``;
* ``copies/<exercise>/<text>__<edit>.py``: npseq's reference backward, the same as a tutorial
  prints it (pasted to run), and the key's solution, each disguised by one edit and by all
  of them (``make_copies.py`` says how).

Each file's function is held against every text a learner could copy
(:func:`npseq.course.copies.closest_copy`), exactly as ``npseq grade`` does it, and the honest
solutions of one exercise against each other, as ``npseq grade DIR/`` compares a class. Printed:
the false positives (honest work called a copy: the target is none), the detection rate of the
copies above the size floor (target: at least 90%), the copies too short to judge, the rate per
edit, and the curve of both rates over thresholds. Nothing here is timed.
"""
import argparse
import collections
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from npseq.course import similarity  # noqa: E402
from npseq.course.copies import closest_copy, learner_code  # noqa: E402


def corpus(kind: str) -> list:
    """``(exercise, path)`` of every file of ``honest`` or ``copies``."""
    return [(os.path.basename(os.path.dirname(path)), path)
            for path in sorted(glob.glob(os.path.join(HERE, kind, "*", "*.py")))]


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def rate(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def measure() -> dict:
    """Every corpus file held against npseq's texts, and the honest solutions of one exercise against each other:
    ``{"honest": [(exercise, path, CopyCheck)], "copies": [...], "pairs": [(Code, Code, Similarity)]}``."""
    honest = [(name, path, closest_copy(read(path), name)) for name, path in corpus("honest")]
    copies = [(name, path, closest_copy(read(path), name)) for name, path in corpus("copies")]
    pairs = []
    by_exercise = collections.defaultdict(list)
    for name, path, _ in honest:
        by_exercise[name].append(path)
    for name, paths in by_exercise.items():
        codes = [learner_code(read(path), name, os.path.relpath(path, HERE)) for path in paths]
        for a in range(len(codes)):
            for b in range(len(codes)):
                if a != b:
                    pairs.append((codes[a], codes[b], similarity.compare(codes[a], codes[b])))
    return {"honest": honest, "copies": copies, "pairs": pairs, "exercises": len(by_exercise)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print every file's closest text and score")
    args = parser.parse_args(argv)
    floor, threshold = similarity.SIZE_FLOOR, similarity.SIMILAR_AT
    print(f"the measure: k-grams of {similarity.K} tokens, window {similarity.W}; size floor {floor} own tokens; "
          f"a copy at {threshold:.0%} shared and above")
    measured = measure()
    honest, copies, pairs = measured["honest"], measured["copies"], measured["pairs"]

    judged_copies = [entry for entry in copies if not entry[2].too_short]
    print(f"\nhonest solutions: {len(honest)} over {measured['exercises']} exercises; "
          f"{sum(c.too_short for _, _, c in honest)} too short to compare")
    false_positives = [entry for entry in honest if entry[2].copied]
    print(f"   false positives against npseq's texts: {rate(len(false_positives), len(honest))}")
    for _, path, check in false_positives:
        print(f"      {os.path.relpath(path, HERE)}: {check.summary()}")
    pair_hits = [(a, b, s) for a, b, s in pairs if similarity.is_copy(s)]
    print(f"   false positives between two honest solutions of one exercise: {rate(len(pair_hits), len(pairs))}")
    for a, b, s in pair_hits:
        print(f"      {a.label} ~ {b.label}: {s.score:.0%}")

    print(f"\ndisguised copies: {len(copies)}; {len(copies) - len(judged_copies)} too short to compare "
          f"(under {floor} own tokens), {len(judged_copies)} judged")
    print(f"   detected: {rate(sum(c.copied for _, _, c in judged_copies), len(judged_copies))}")
    per_edit = collections.defaultdict(list)
    for _, path, check in judged_copies:
        per_edit[os.path.basename(path)[:-3].split("__")[1]].append(check.copied)
    for edit, found in sorted(per_edit.items()):
        print(f"   {edit:>9}: {rate(sum(found), len(found))}")
    missed = [entry for entry in judged_copies if not entry[2].copied]
    for _, path, check in missed:
        print(f"      missed {os.path.relpath(path, HERE)}: {check.summary()}")

    print("\nthe curve (judged functions only: the size floor held):")
    print("   threshold  copies detected  honest flagged  honest pairs flagged")
    for step in range(30, 100, 5):
        t = step / 100
        detected = sum(c.score >= t for _, _, c in judged_copies)
        flagged = sum(not c.too_short and c.score >= t for _, _, c in honest)
        paired = sum(s.own >= floor and s.score >= t for _, _, s in pairs)
        mark = "  <- npseq's" if abs(t - threshold) < 1e-9 else ""
        print(f"   {t:9.2f}  {rate(detected, len(judged_copies)):>15}  {rate(flagged, len(honest)):>14}  "
              f"{rate(paired, len(pairs)):>20}{mark}")
    if args.list:
        print("\nevery file:")
        for _, path, check in honest + copies:
            print(f"   {os.path.relpath(path, HERE)}: {check.summary()}")


if __name__ == "__main__":
    main()

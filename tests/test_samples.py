"""The seeded sample inputs (npseq.samples): the numbers of the generator in the order asked, lengths with their edge
cases, the mask of lengths, and the backward of an attention forward called as finite differences call it."""
import numpy as np

from npseq.samples import edge_lengths, ids, lengths, normal, valid_mask, with_dweights


def test_normal_is_the_generators_draws_in_the_order_asked_scaled():
    rng, same = np.random.default_rng(3), np.random.default_rng(3)
    a, b = normal(rng, 2, 3), normal(rng, 4, scale=0.5)
    assert a.dtype == np.float64 and a.shape == (2, 3) and b.shape == (4,)
    np.testing.assert_array_equal(a, same.standard_normal((2, 3)))
    np.testing.assert_array_equal(b, 0.5 * same.standard_normal(4))
    assert normal(np.random.default_rng(3), 2, dtype=np.float32).dtype == np.float32


def test_ids_lie_in_range_and_lengths_are_int64():
    drawn = ids(np.random.default_rng(0), 5, 3, 4)
    assert drawn.shape == (3, 4) and drawn.min() >= 0 and drawn.max() < 5
    assert lengths([[4, 1], [0, 2]]).dtype == np.int64
    assert edge_lengths(6).tolist() == [6, 1, 0]  # a full row, one valid step, all padding


def test_the_mask_of_lengths_per_example_and_per_query():
    assert valid_mask(np.array([3, 1, 0]), 3).tolist() == [[True, True, True], [True, False, False],
                                                           [False, False, False]]
    per_query = valid_mask(np.array([[2, 0]]), 3)
    assert per_query.shape == (1, 2, 3) and per_query.tolist() == [[[True, True, False], [False, False, False]]]


def test_with_dweights_hands_the_cache_before_dweights_and_keeps_the_first_gradients():
    def backward(dout, cache, dweights):
        return ("dq", dout), ("dk", cache), ("dv", dweights)

    assert with_dweights(backward)("a", "b", "c") == (("dq", "a"), ("dk", "c"), ("dv", "b"))
    assert with_dweights(backward, keep=2)("a", "b", "c") == (("dq", "a"), ("dk", "c"))

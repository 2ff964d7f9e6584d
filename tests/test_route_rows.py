"""Networks that compile every pair's route at once (``route_rows``) give the routes of
:meth:`route`, and their self-check catches a ``route_rows`` that disagrees."""
import numpy as np
import pytest

from ccmod.errors import CcmodInputError
from ccmod.netsys.networks import make_network
from ccmod.netsys.validate import check_routes, sample_pairs


def test_star_route_rows_equal_the_pair_by_pair_table():
    net = make_network("star:bandwidth=1e8,latency=1e-6", 16)
    pairs = np.array([[s, d] for s in range(16) for d in range(16)], np.int64)
    t = net.compile_routes(pairs)
    indptr = np.zeros(len(pairs) + 1, np.int64)
    res = net._route_table(pairs, indptr)       # route(), pair by pair
    assert np.array_equal(t.indptr, indptr)
    assert np.array_equal(t.resources, res)
    assert t.resources.dtype == np.int32
    same = pairs[:, 0] == pairs[:, 1]
    assert np.all(t.hops[same] == 0) and np.all(t.hops[~same] == 2)
    assert np.allclose(t.latency_s[~same], 2e-6) and np.all(t.latency_s[same] == 0)


def test_a_route_rows_that_disagrees_with_route_is_refused():
    net = make_network("star", 8)

    class Skewed(type(net)):
        route = type(net).route                  # right, and defined beside the rows

        def route_rows(self, src, dst):          # enters the source's link again
            return np.stack([2 * np.asarray(src), 2 * np.asarray(src) + 1], 1)

    bad = Skewed.__new__(Skewed)
    bad.__dict__.update(net.__dict__)
    with pytest.raises(CcmodInputError, match="route_rows and route disagree on 0->1"):
        check_routes(bad, sample_pairs(8))
    check_routes(net, sample_pairs(8))         # the star's own rows pass

    class RouteOnly(type(net)):                  # a subclass changing route() alone
        def route(self, src, dst):
            return [(int(dst), 1)]

    other = RouteOnly.__new__(RouteOnly)
    other.__dict__.update(net.__dict__)
    with pytest.raises(CcmodInputError, match="uses link"):
        check_routes(other, sample_pairs(8))     # checked pair by pair, through route()
    t = other.compile_routes(np.array([[0, 1]]))
    assert list(t.resources) == [3]              # compiled through route() too

"""The stream reference checked against cases worked out by hand from the rules in stream_reference.py's
docstring: epochs, watermarks per substream and coalesced, lateness at a window's first stage, and the
epoch each window is emitted in. Every expected value is written out literally, with the reasoning beside
it. Timestamps are the items themselves, or an item's "t"."""

from __future__ import annotations

import math

import pytest
from reference import as_multiset, run_reference
from stream_reference import Watermarks, epoch_watermarks, order_allowed, run_stream_reference, unending_watermarks

from jetspark import AggregateOperation, KeyedWindowResult, Pipeline, PipelineDefinitionError, Sinks, Sources
from jetspark import AggregateOperations as ops
from jetspark import WindowDefinition as Window
from jetspark import WindowResult as W

INF = math.inf
#: Counts like ops.counting() but cannot combine: the planner gives it a single stage.
COUNT_WITHOUT_COMBINE = AggregateOperation.of(lambda: 0, lambda n, _: n + 1)
#: Counts and combines, but is user-defined: on a stream, a single stage too (Python runs it).
USER_DEFINED_COUNT = AggregateOperation.of(lambda: 0, lambda n, _: n + 1, combine=lambda a, b: a + b)


def stream(substreams, k, lag, build, ts=lambda x: x, preserve_order=False):
    """Runs ``build(stage)`` behind ``items_stream(*substreams)`` into the sink "out"; the window stage
    is named "w". Returns the reference's StreamRun."""
    p = Pipeline.create(preserve_order)
    source = p.read_from(Sources.items_stream(*substreams, items_per_batch=k)).with_timestamps(ts, allowed_lag_ms=lag)
    build(source).set_name("w").write_to(Sinks.list("out"))
    return run_stream_reference(p)


def tumbling_count(size, op=None):
    return lambda s: s.window(Window.tumbling(size)).aggregate(op or ops.counting())


# -- watermarks ------------------------------------------------------------------------------------------

def test_watermarks_per_substream_and_coalesced_by_hand():
    #  k = 2, lag 1.   A: 0 5 | 3 10        B: 1 | (done)       C: empty (done after epoch 0)
    #  epoch 0: wm_A = 5-1 = 4, wm_B = 1-1 = 0, wm_C = -inf; B and C are done: W(0) = wm_A = 4
    #  epoch 1: wm_A = 10-1 = 9 (3 does not lower it); every substream done: W(1) = +inf
    assert epoch_watermarks([[0, 5, 3, 10], [1], []], 2, 1) == Watermarks([[4, 0, -INF], [9, 0, -INF]], [4, INF])
    #  k = 1, lag 0.  A: 7 2 9, B: 1 None 4 (its second timestamp unreadable: it raises nothing)
    #  wm_A: 7 7 9; wm_B: 1 1 4; W: 1 1 then +inf (both done after epoch 2)
    assert epoch_watermarks([[7, 2, 9], [1, None, 4]], 1, 0) == Watermarks([[7, 1], [7, 1], [9, 4]], [1, 1, INF])


def test_watermarks_of_two_sources_cut_and_lagging_each_by_its_own_by_hand():
    #  Rule 10.  A: k = 1, lag 0: 0 | 50 (done after epoch 1).  B: k = 2, lag 100: 1000 1001 | 1002 1003 | 1004
    #  epoch 0: wm_A = 0, wm_B = 1001-100 = 901: W(0) = 0
    #  epoch 1: wm_A = 50, but A is done; wm_B = 903: W(1) = 903
    #  epoch 2: wm_B = 904; every substream done: W(2) = +inf
    assert epoch_watermarks([[0, 50], [1000, 1001, 1002, 1003, 1004]], [1, 2], [0, 100]) == Watermarks(
        [[0, 901], [50, 903], [50, 904]], [0, 903, INF])


def test_unending_watermarks_leave_a_quiet_value_out_with_the_1_ms_timeout():
    #  lag 0; per epoch (value, ts):  0: (0, 5) (1, 2)   1: (0, 8)   2: (2, 1)   3: (1, 20) (2, 30)
    #  no idleness: W = min over the values seen: 2, 2, 1 -> stays 2, then min(8, 20, 30) = 8
    #  1 ms: epoch 1: value 1 quiet -> idle, W = 8; epoch 2: values 0 and 1 quiet, 2 new (not idle): W stays
    #  8 (2's 1 lowers nothing); epoch 3: value 0 quiet: W = min(20, 30) = 20
    epochs = [[(0, 5), (1, 2)], [(0, 8)], [(2, 1)], [(1, 20), (2, 30)]]
    marks = [[5, 2, -INF], [8, 2, -INF], [8, 2, 1], [8, 20, 30]]
    assert unending_watermarks(epochs, 3, 0) == Watermarks(marks, [2, 2, 2, 8], [[False] * 3] * 4)
    idle = [[False, False, False], [False, True, False], [True, True, False], [True, False, False]]
    assert unending_watermarks(epochs, 3, 0, quiet_epochs_idle=True) == Watermarks(marks, [2, 8, 8, 20], idle)
    #  every value seen quiet: the greatest of theirs
    assert unending_watermarks([[(0, 5), (1, 2)], []], 2, 0, quiet_epochs_idle=True).coalesced == [2, 5]


def test_run_stream_reference_reports_the_sources_watermarks():
    out = stream([[0, 5, 3, 10], [1], []], 2, 1, tumbling_count(100))
    assert out.watermarks == {"source#0": Watermarks([[4, 0, -INF], [9, 0, -INF]], [4, INF])}


# -- emission and lateness ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", [ops.counting(), COUNT_WITHOUT_COMBINE], ids=["two_stage", "single_stage"])
def test_a_lagging_substream_holds_the_windows_back_and_nothing_is_dropped(op):
    #  k = 1, lag 0, tumbling(10).  A (ahead): 100 110 120 130     B (behind): 0 5 10 15
    #  wm_A(b) = A[b], wm_B(b) = B[b]; both done after epoch 3: W = 0 5 10 +inf
    #  Each substream is in order: no item is behind even its own substream's watermark.
    #  [0,10) holds 0 5, emitted once W >= 10: epoch 2; the rest at the end (epoch 3), in end order.
    out = stream([[100, 110, 120, 130], [0, 5, 10, 15]], 1, 0, tumbling_count(10, op))
    assert out.late_dropped == {"w": 0}
    assert out.emitted["w"] == [[], [], [W(0, 10, 2)],
                                [W(10, 20, 2), W(100, 110, 1), W(110, 120, 1), W(120, 130, 1), W(130, 140, 1)]]
    assert out.outputs["out"] == [r for epoch in out.emitted["w"] for r in epoch]


def slow_or_fast_other(fast):
    #  k = 1, lag 5, tumbling(10).  A: 10 30 12.   B: four items, 0 1 2 3 (slow) or 40 41 42 43 (fast).
    #  wm_A(1) = 30-5 = 25: closedEnd 20, and 12's frame ends at 20 <= 20: behind A's own watermark.
    #  slow B: W(1) = min(25, 1-5) = -4, closedEnd -10: 12 is not behind the coalesced watermark.
    #  fast B: W(1) = min(25, 41-5) = 25: 12 is behind that one too.
    return [[10, 30, 12], [40, 41, 42, 43] if fast else [0, 1, 2, 3]]


@pytest.mark.parametrize("fast", [False, True], ids=["slow_other", "fast_other"])
def test_two_stage_window_drops_an_item_behind_its_own_substreams_watermark(fast):
    # counting combines: two stages, the first one sees A's watermark alone. 12 is dropped either way.
    out = stream(slow_or_fast_other(fast), 1, 5, tumbling_count(10))
    assert out.late_dropped == {"w": 1}
    expected_b = [W(40, 50, 4)] if fast else [W(0, 10, 4)]
    assert as_multiset(out.outputs["out"]) == as_multiset(expected_b + [W(10, 20, 1), W(30, 40, 1)])


@pytest.mark.parametrize("fast", [False, True], ids=["slow_other", "fast_other"])
def test_single_stage_window_drops_an_item_only_behind_the_coalesced_watermark(fast):
    out = stream(slow_or_fast_other(fast), 1, 5, tumbling_count(10, COUNT_WITHOUT_COMBINE))
    assert out.late_dropped == {"w": 1 if fast else 0}
    expected_b = [W(40, 50, 4)] if fast else [W(0, 10, 4)]
    a_10_20 = W(10, 20, 1 if fast else 2)  # 10, and 12 when it is not late
    assert as_multiset(out.outputs["out"]) == as_multiset(expected_b + [a_10_20, W(30, 40, 1)])


@pytest.mark.parametrize("build, preserve_order", [
    (tumbling_count(10, COUNT_WITHOUT_COMBINE), False),  # cannot combine
    (tumbling_count(10, USER_DEFINED_COUNT), False),  # user-defined
    (lambda s: s.window(Window.tumbling(10).set_early_results_period(1000)).aggregate(ops.counting()), False),
    (lambda s: s.window(Window.tumbling(10)).aggregate(ops.to_list()), True),  # preserved order, order-sensitive op
    (lambda s: s.rebalance(lambda x: x % 2).grouping_key(lambda x: x % 2).window(Window.tumbling(10))
     .aggregate(ops.counting()), False),  # a keyed window's input rebalanced
    (lambda s: s.rebalance().map(lambda x: x).window(Window.tumbling(10)).aggregate(ops.counting()), False),
], ids=["no_combine", "user_defined", "early_results", "ordered_to_list", "rebalanced_keyed", "rebalanced_upstream"])
def test_every_way_to_a_first_stage_that_reads_all_substreams_coalesces_before_lateness(build, preserve_order):
    # slow B as above: 12 is behind A's own watermark only. Where the first stage reads every substream
    # (a single stage, or a shuffle before it) it sees the coalesced watermark, and keeps 12.
    out = stream(slow_or_fast_other(False), 1, 5, build, preserve_order=preserve_order)
    assert out.late_dropped == {"w": 0}


def test_preserved_order_keeps_an_order_insensitive_window_in_two_stages():
    # as above, with counting: 12 is behind A's own watermark, which the first stage sees
    assert stream(slow_or_fast_other(False), 1, 5, tumbling_count(10), preserve_order=True).late_dropped == {"w": 1}


def test_a_window_is_emitted_when_the_watermark_reaches_its_end_a_session_when_it_passes_it():
    #  one substream 0 20 21, k = 1, lag 10: wm = -10 10 11, W(2) = +inf (done)
    #  tumbling(10): [0,10) ends at 10 <= W(1) = 10: epoch 1.  session(10): [0,10) needs 10 < W: epoch 2.
    #  [20,30) and the session [20,31) only at the end.
    tumbling = stream([[0, 20, 21]], 1, 10, tumbling_count(10))
    assert tumbling.emitted["w"] == [[], [W(0, 10, 1)], [W(20, 30, 2)]]
    sessions = stream([[0, 20, 21]], 1, 10, lambda s: s.grouping_key(lambda x: "a").window(Window.session(10))
                      .aggregate(ops.counting()))
    assert sessions.emitted["w"] == [[], [], [KeyedWindowResult(0, 10, "a", 1), KeyedWindowResult(20, 31, "a", 2)]]


def test_a_session_event_at_the_watermark_is_not_late_but_a_frame_that_ends_there_is():
    #  one substream 10 20 10, k = 1, lag 10: W(1) = 20-10 = 10, the second 10 comes in epoch 2.
    #  session(5): 10 < W(1) does not hold: kept, and joins [10,15); 20 is [20,25)
    sessions = stream([[10, 20, 10]], 1, 10, lambda s: s.grouping_key(lambda x: "a").window(Window.session(5))
                      .aggregate(ops.counting()))
    assert sessions.late_dropped == {"w": 0}
    assert as_multiset(sessions.outputs["out"]) == as_multiset([KeyedWindowResult(10, 15, "a", 2),
                                                                 KeyedWindowResult(20, 25, "a", 1)])
    #  tumbling(10): closedEnd(10) = 10, and the frame of 9 ends at 10: late; the frame of 10 ends at 20: not
    assert stream([[10, 20, 9]], 1, 10, tumbling_count(10)).late_dropped == {"w": 1}
    assert stream([[10, 20, 10]], 1, 10, tumbling_count(10)).late_dropped == {"w": 0}


def test_the_windows_of_an_in_order_stream_do_not_depend_on_the_cut():
    #  ts 0..29 in order, one substream, lag 0: nothing is ever behind the watermark.
    #  sliding(10, 5) keyed by parity; windows end at 5, 10, ..., 35:
    #  [-5,5): even 0 2 4, odd 1 3;  [25,35): even 26 28, odd 25 27 29;  every other window 5 and 5
    expected = ([KeyedWindowResult(-5, 5, 0, 3), KeyedWindowResult(-5, 5, 1, 2)]
                + [KeyedWindowResult(end - 10, end, key, 5) for end in range(10, 35, 5) for key in (0, 1)]
                + [KeyedWindowResult(25, 35, 0, 2), KeyedWindowResult(25, 35, 1, 3)])
    for k in (1, 7, 100):
        out = stream([list(range(30))], k, 0, lambda s: s.grouping_key(lambda x: x % 2)
                     .window(Window.sliding(10, 5)).aggregate(ops.counting()))
        assert out.late_dropped == {"w": 0}, k
        assert as_multiset(out.outputs["out"]) == as_multiset(expected), k


def test_an_empty_substream_is_done_after_the_first_epoch_and_holds_nothing_back():
    #  A: 1 2 3, B: empty; k = 1, lag 0. B done after epoch 0, so W = wm_A: 1 2, then +inf.
    #  tumbling(2): [0,2) holds 1, ends at 2 <= W(1): epoch 1; [2,4) holds 2 3: the end.
    out = stream([[1, 2, 3], []], 1, 0, tumbling_count(2))
    assert out.watermarks["source#0"].coalesced == [1, 2, INF]
    assert out.emitted["w"] == [[], [W(0, 2, 1)], [W(2, 4, 2)]]
    # nothing at all: one epoch, W(0) = +inf, no window
    nothing = stream([[], []], 3, 0, tumbling_count(2))
    assert nothing.watermarks["source#0"] == Watermarks([[-INF, -INF]], [INF])
    assert nothing.emitted["w"] == [[]] and nothing.outputs["out"] == []


def test_an_item_filtered_out_still_raises_its_substreams_watermark():
    #  one substream 0 20 3, k = 1, lag 0; the filter drops 20 before the window.
    #  wm(1) = 20 all the same: closedEnd 20 (tumbling 10), and 3's frame ends at 10: late.
    out = stream([[0, 20, 3]], 1, 0, lambda s: s.filter(lambda x: x < 10).window(Window.tumbling(10))
                 .aggregate(ops.to_list()))
    assert out.late_dropped == {"w": 1}
    assert out.outputs["out"] == [W(0, 10, [0])]


@pytest.mark.parametrize("other, late, a_sessions", [
    #  one substream: W = 0 5 30; 8 comes in epoch 3, 8 < W(2) = 30: late.
    #  a: 0 5 -> [0,15), 30 -> [30,40)
    ([], 1, [KeyedWindowResult(0, 15, "a", 2), KeyedWindowResult(30, 40, "a", 1)]),
    #  B lags (0 1 2 3 4, done after epoch 4): W(2) = min(30, 2) = 2, 8 is not late and joins [0,15)
    #  into [0,18); b: 0..4 -> [0,14)
    ([("b", t) for t in range(5)], 0, [KeyedWindowResult(0, 18, "a", 3), KeyedWindowResult(30, 40, "a", 1),
                                       KeyedWindowResult(0, 14, "b", 5)]),
], ids=["alone", "behind_a_lagging_substream"])
def test_a_session_event_is_late_only_behind_the_coalesced_watermark(other, late, a_sessions):
    a = [("a", 0), ("a", 5), ("a", 30), ("a", 8)]
    out = stream([a, other], 1, 0, lambda s: s.grouping_key(lambda e: e[0]).window(Window.session(10))
                 .aggregate(ops.counting()), ts=lambda e: e[1])
    assert out.late_dropped == {"w": late}
    assert as_multiset(out.outputs["out"]) == as_multiset(a_sessions)


# -- plumbing ----------------------------------------------------------------------------------------------

def test_a_stateless_stream_runs_epoch_by_epoch_and_run_reference_takes_streams():
    #  k = 2: epoch 0 is A's 1 2 then B's 4; epoch 1 is A's 3
    p = Pipeline.create()
    p.read_from(Sources.items_stream([1, 2, 3], [4], items_per_batch=2)).without_timestamps().map(
        lambda x: x * 10).write_to(Sinks.list("out"))
    assert run_stream_reference(p).outputs == {"out": [10, 20, 40, 30]}
    assert run_reference(p) == {"out": [10, 20, 40, 30]}


def test_stateless_stages_after_a_window_see_its_results_in_emission_order():
    out = stream([[0, 20, 21]], 1, 10, lambda s: tumbling_count(10)(s).set_name("w").map(lambda r: (r.start, r.result)))
    assert out.outputs["out"] == [(0, 1), (20, 2)]


def test_a_window_behind_a_source_without_timestamps_breaks_the_rule():
    p = Pipeline.create()
    (p.read_from(Sources.items_stream([1])).without_timestamps().window(Window.tumbling(2)).aggregate(ops.counting())
     .write_to(Sinks.list("out")))
    with pytest.raises(PipelineDefinitionError, match="window-timestamps-from-items|without a timestamp"):
        run_stream_reference(p)


def test_stream_stages_it_does_not_model_are_refused():
    # A window reads the source's watermarks through stages that keep nothing between epochs only.
    with pytest.raises(NotImplementedError, match="through map, filter, flat_map, peek, merge and hash joins only"):
        stream([[1]], 1, 0, lambda s: tumbling_count(10)(s.map_stateful(lambda: 0, lambda n, x: (n, x))))


def test_a_late_item_whose_key_fails_is_the_window_stages_dead_letter_not_a_late_item():
    #  one substream 0 20 3 "x", k = 1, lag 0: from epoch 2 on, W = 20, and 3 and "x" are late
    #  (closedEnd 20). The key of "x" (x % 2) fails first: a dead letter, and only 3 counts as late; as the
    #  window routes its failures, 3 is its dead letter too, a LateEvent.
    p = Pipeline.create()
    (p.read_from(Sources.items_stream([0, 20, 3, "x"])).with_timestamps(lambda x: 5 if x == "x" else x, allowed_lag_ms=0)
     .grouping_key(lambda x: x % 2).window(Window.tumbling(10)).aggregate(ops.counting()).set_name("w")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("out")))
    out = run_stream_reference(p)
    assert out.late_dropped == {"w": 1}
    assert out.outputs["out"] == [KeyedWindowResult(0, 10, 0, 1), KeyedWindowResult(20, 30, 0, 1)]
    assert as_multiset(out.outputs["dead_letter:bad"]) == as_multiset([("x", "w", "TypeError"), (3, "w", "LateEvent")])


def test_a_failing_record_is_one_dead_letter_however_many_early_results_count_it():
    #  one substream 1 0 2 3, k = 1, no lag: four epochs, early results after epochs 1 and 2 (rule 7). The
    #  sum fails on 0 (10 // 0): one dead letter, though the early results of epochs 1 and 2 hold it.
    p = Pipeline.create()
    (p.read_from(Sources.items_stream([1, 0, 2, 3])).with_timestamps(lambda x: 0, allowed_lag_ms=0)
     .window(Window.tumbling(10).set_early_results_period(1)).aggregate(AggregateOperation.of(
         lambda: 0, lambda a, x: a + 10 // x, combine=lambda a, b: a + b)).set_name("w")
     .on_error(Sinks.dead_letter("bad")).write_to(Sinks.list("out")))
    out = run_stream_reference(p)
    assert out.outputs["dead_letter:bad"] == [(0, "w", "ZeroDivisionError")]
    assert out.early["w"] == [[], [W(0, 10, 10, is_early=True)], [W(0, 10, 15, is_early=True)], []]
    assert out.outputs["out"] == [W(0, 10, 18)]


def test_order_allowed_keeps_the_epochs_and_each_substreams_order():
    assert order_allowed([(0, 1, 0), (0, 0, 0), (0, 0, 1), (1, 1, 1)])  # substreams interleave within an epoch
    assert not order_allowed([(1, 0, 2), (0, 1, 0)])  # an epoch goes back
    assert not order_allowed([(0, 0, 1), (0, 0, 0)])  # a substream's order breaks


def test_map_stateful_state_runs_on_epoch_by_epoch_substream_after_substream():
    history = lambda seen, x: ([*seen, x], [*seen, x])  # noqa: E731
    out = stream([[1, 2, 3], [10, 20]], 2, 0, lambda s: s.map_stateful(list, history)).outputs["out"]
    assert out[-1] == [1, 2, 10, 20, 3]

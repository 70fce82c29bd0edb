"""The match: every change checked, one precise error each, JSON round trips."""

import dataclasses
import json
import math
import random
from dataclasses import replace

import pytest

from ttt.game import view
from ttt.game.endings import abandon, abort, claim, decline, offer_rematch, rematch, resign
from ttt.game.match import (
    AI,
    FIRST_MOVE,
    Match,
    MatchError,
    ai_reply,
    create,
    credit_outage,
    expired,
    hint,
    play,
    rename,
    results,
    take_seat,
    time_out,
)
from ttt.game.view import allowed
from ttt.store import codec
from ttt.store.codec import from_json, to_json

NOW = 1000.0


def rng():
    return random.Random(7)


def code_of(fn, *args, **kwargs) -> str:
    with pytest.raises(MatchError) as error:
        fn(*args, **kwargs)
    return error.value.code


def test_ai_opens_when_the_player_takes_o():
    match = create("ai", "alice", NOW, you="O", level="perfect", rng=rng())
    assert match.seats == {"X": AI, "O": "alice"}
    assert len(match.moves) == 1 and match.turn == "O"


def test_new_ai_game_as_x_waits_for_the_player():
    match = create("ai", "alice", NOW, you="X", level="easy", rng=rng())
    assert match.moves == () and match.turn == "X" and match.role("alice") == "X"


def test_create_rejects_unknown_mode_level_and_side():
    assert code_of(create, "chess", "a", NOW) == "bad_request"
    assert code_of(create, "ai", "a", NOW, level="godlike") == "bad_request"
    assert code_of(create, "friend", "a", NOW, you="Z") == "bad_request"


def test_play_refuses_each_illegal_move_precisely():
    match = create("friend", "alice", NOW, you="X")
    match = take_seat(match, "bob", NOW)
    assert code_of(play, match, "carol", 0, NOW) == "spectator"
    assert code_of(play, match, "bob", 0, NOW) == "not_your_turn"
    match = play(match, "alice", 4, NOW)
    assert code_of(play, match, "bob", 4, NOW) == "occupied"
    assert code_of(play, match, "bob", 9, NOW) == "bad_request"
    assert code_of(play, match, "bob", 0, NOW, version=0) == "stale"
    assert play(match, "bob", 0, NOW, version=1).moves == (4, 0)


def test_game_over_refuses_moves_and_reports_the_line():
    match = create("local", "alice", NOW)
    for cell in (0, 3, 1, 4, 2):
        match = play(match, "alice", cell, NOW)
    public = view.public(match)
    assert public["status"] == "won" and public["winner"] == "X" and public["line"] == [0, 1, 2]
    assert public["reason"] == "line" and public["turn"] is None
    assert code_of(play, match, "alice", 8, NOW) == "game_over"


def test_local_game_lets_the_one_player_move_for_both_sides():
    match = create("local", "alice", NOW)
    assert match.role("alice") == "both"
    match = play(play(match, "alice", 0, NOW), "alice", 1, NOW)
    assert str(match.board) == "XO......."


def test_friend_seat_goes_to_the_first_other_player_then_spectators():
    match = create("friend", "alice", NOW, you="O")
    assert view.public(match)["seats"] == {"X": "open", "O": "human"}
    assert take_seat(match, "alice", NOW) is match
    match = take_seat(match, "bob", NOW)
    assert match.role("bob") == "X"
    assert take_seat(match, "carol", NOW).role("carol") == "spectator"


def test_claim_needs_a_friend_game_and_the_wait_over_on_either_turn():
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    # PROTOCOL v5: no win before both sides have moved (abort instead).
    assert code_of(claim, match, "alice", 0.0, NOW) == "not_allowed"
    match = play(play(match, "alice", 4, NOW), "bob", 0, NOW)
    assert code_of(claim, match, "alice", 0.5, NOW) == "not_allowed"
    assert code_of(claim, match, "alice", None, NOW) == "not_allowed"
    assert code_of(claim, match, "carol", 0.0, NOW) == "spectator"
    won = claim(match, "alice", 0.0, NOW)
    assert view.public(won)["status"] == "won" and view.public(won)["reason"] == "claim"
    assert won.winner == "X" and view.public(won)["line"] is None
    # The player not on move may claim too: the absent one cannot block the end for ever.
    assert claim(match, "bob", 0.0, NOW).winner == "O"
    ai = create("ai", "alice", NOW, level="easy", rng=rng())
    assert code_of(claim, ai, "alice", 0.0, NOW) == "not_allowed"


def test_resign_loses_at_once_and_is_refused_in_pass_and_play():
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    lost = resign(match, "bob", NOW + 1)
    assert lost.status == "won" and lost.winner == "X" and lost.reason == "resign"
    assert view.public(lost)["turn"] is None
    assert code_of(resign, lost, "alice", NOW) == "game_over"
    assert code_of(resign, match, "carol", NOW) == "spectator"
    assert code_of(resign, create("local", "alice", NOW), "alice", NOW) == "not_allowed"
    ai = create("ai", "alice", NOW, you="X", level="easy", rng=rng())
    assert results(ai, resign(ai, "alice", NOW)) == [("alice", "easy", "losses")]


def test_abort_only_before_both_sides_have_moved_and_counts_nowhere():
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    one = play(match, "alice", 4, NOW)
    gone = abort(one, "bob", NOW)
    assert gone.status == "aborted" and gone.winner is None and gone.reason is None
    assert gone.score() == {"X": 0, "O": 0, "draws": 0}
    assert view.view(gone, "X", online={}, claimable_in=None, watchers=0, now=NOW)["aborted"] == {
        "reason": "abort", "by": "O"}
    assert from_json(to_json(gone)) == gone
    two = play(one, "bob", 0, NOW)
    assert code_of(abort, two, "alice", NOW) == "not_allowed"


def test_after_an_abort_one_offer_and_one_acceptance_start_a_new_game_same_score():
    match = resign(take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW), "bob", NOW)
    _, second = rematch(offer_rematch(match, "alice", NOW), "bob", NOW, rng())
    gone = abort(second, "bob", NOW)
    assert "rematch" in allowed(gone, "X", None) and "rematch" in allowed(gone, "O", None)
    offered = offer_rematch(gone, "alice", NOW)
    old, third = rematch(offered, "bob", NOW, rng())
    assert old.rematch_id == third.id and third.seats == {"X": "alice", "O": "bob"}
    assert third.score() == {"X": 1, "O": 0, "draws": 0}  # Alice's win, nothing for the abort


def test_pass_and_play_is_called_off_by_its_player_or_left_for_another_game():
    local = play(create("local", "alice", NOW), "alice", 4, NOW)
    assert "abort" in allowed(local, "both", None)
    gone = abort(local, "alice", NOW + 1)
    assert gone.status == "aborted" and gone.score() == {"X": 0, "O": 0, "draws": 0}
    assert code_of(abort, local, "bob", NOW) == "spectator"
    left = abandon(local, NOW)
    assert left.status == "aborted" and left.finish.termination == "abandoned"
    assert abandon(gone, NOW) is gone
    friend = create("friend", "alice", NOW)
    assert abandon(friend, NOW) is friend
    old, fresh = rematch(local, "alice", NOW, rng())  # replayed mid-game: the old one ends
    assert old.is_over and old.status == "aborted" and not fresh.is_over


def test_an_ai_game_can_be_aborted_until_the_person_has_made_a_second_move():
    ai = create("ai", "alice", NOW, you="X", level="easy", rng=rng())
    first = ai_reply(play(ai, "alice", 4, NOW), rng(), NOW)
    assert "abort" in allowed(first, "X", None)
    gone = abort(first, "alice", NOW)
    assert gone.status == "aborted" and results(first, gone) == []  # counts nowhere
    second = play(first, "alice", next(c for c in range(9) if first.board.cell(c) == "."), NOW)
    assert "abort" not in allowed(second, "X", None)
    assert code_of(abort, second, "alice", NOW) == "not_allowed"
    # Playing O, the AI's moves are not the person's: one move of their own still leaves freely.
    as_o = create("ai", "alice", NOW, you="O", level="easy", rng=rng())
    free = next(c for c in range(9) if as_o.board.cell(c) == ".")
    one = ai_reply(play(as_o, "alice", free, NOW), rng(), NOW)
    assert len(one.moves) == 3 and "abort" in allowed(one, "O", None)


def test_friend_rematch_is_an_offer_the_other_player_accepts_or_declines():
    match = resign(take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW), "bob", NOW)
    assert code_of(rematch, match, "alice", NOW, rng()) == "not_allowed"  # nobody offered
    offered = offer_rematch(match, "alice", NOW)
    assert offered.offer == "X" and offer_rematch(offered, "alice", NOW) is offered
    assert code_of(rematch, offered, "alice", NOW, rng()) == "not_allowed"  # not your own
    assert decline(offered, "bob", NOW).offer is None
    assert decline(offered, "alice", NOW).offer is None  # withdrawn
    assert code_of(decline, match, "bob", NOW) == "not_allowed"
    old, fresh = rematch(offered, "bob", NOW, rng())
    assert old.rematch_id == fresh.id and old.offer is None
    assert fresh.seats == {"X": "bob", "O": "alice"}
    # Alice won the first game at X; she now sits at O and her win goes with her.
    assert fresh.score() == {"X": 0, "O": 1, "draws": 0}


def test_can_lists_what_each_receiver_may_do():
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    assert allowed(match, "X", None) == ["move", "resign", "abort", "react"]
    assert allowed(match, "O", None) == ["resign", "abort", "react"]
    assert allowed(match, "O", 0.0) == ["resign", "abort", "claim", "react"]
    assert allowed(match, "spectator", None) == []
    over = offer_rematch(resign(match, "bob", NOW), "bob", NOW)
    assert allowed(over, "X", None) == ["analyze", "rematch", "decline", "react"]
    assert allowed(over, "O", None) == ["analyze", "decline", "react"]
    assert allowed(over, "spectator", None) == ["analyze"]
    ai = create("ai", "alice", NOW, you="X", level="easy", rng=rng())
    # Version 1 starts a rematch against the AI or in pass-and-play at any time.
    assert allowed(ai, "X", None) == ["move", "hint", "analyze", "resign", "abort", "rematch"]
    local = create("local", "alice", NOW)
    assert allowed(local, "both", None) == ["move", "hint", "analyze", "abort", "rematch"]
    assert allowed(abort(take_seat(create("friend", "a", NOW), "b", NOW), "a", NOW),
                   "X", None) == ["analyze", "rematch", "react"]


def test_a_timed_game_starts_fairly_then_runs_a_full_clock_a_move():
    waiting = create("friend", "alice", NOW, you="X", clock=10)
    assert waiting.deadline is None
    match = take_seat(waiting, "bob", NOW + 5)
    # X's first move: the first-move window, counted from both seats taken.
    assert match.deadline == NOW + 5 + FIRST_MOVE and match.seconds_left(NOW + 12) == 23.0
    first = play(match, "alice", 4, NOW + 14)
    assert first.deadline == NOW + 14 + FIRST_MOVE  # O's first move: its own window
    second = play(first, "bob", 0, NOW + 40)
    assert second.deadline == NOW + 50  # both have moved: the clock runs, 10 s a move
    moved = play(second, "alice", 8, NOW + 45)
    assert moved.deadline == NOW + 55
    assert not expired(moved, NOW + 54.9) and time_out(moved, NOW + 54.9) is moved
    late = time_out(moved, NOW + 55)
    assert late.winner == "X" and late.reason == "time" and late.deadline is None
    assert code_of(create, "ai", "alice", NOW, level="easy", clock=10) == "bad_request"
    assert code_of(create, "friend", "alice", NOW, clock=15) == "bad_request"


@pytest.mark.parametrize("first_moves", [(), (4,)])
def test_a_missed_first_move_calls_the_game_off_with_no_result(first_moves):
    match = take_seat(create("friend", "alice", NOW, you="X", clock=10), "bob", NOW)
    for cell in first_moves:
        match = play(match, match.seats[match.turn], cell, NOW)
    assert time_out(match, NOW + FIRST_MOVE - 0.1) is match
    gone = time_out(match, NOW + FIRST_MOVE)
    assert gone.status == "aborted" and gone.winner is None and gone.reason is None
    assert gone.finish.termination == "no_start" and gone.score() == {"X": 0, "O": 0, "draws": 0}
    seen = view.view(gone, "O", online={}, claimable_in=None, watchers=0, now=NOW + FIRST_MOVE)
    assert seen["aborted"] == {"reason": "no_start", "by": None} and seen["time_left"] is None
    assert "rematch" in seen["can"]


def test_a_rematch_of_a_timed_game_opens_with_the_first_move_window():
    match = resign(take_seat(create("friend", "a", NOW, clock=30), "b", NOW), "b", NOW)
    _, fresh = rematch(offer_rematch(match, "a", NOW), "b", NOW + 1, rng())
    assert fresh.deadline == NOW + 1 + FIRST_MOVE


def test_an_outage_is_given_back_to_a_running_clock_once():
    match = take_seat(create("friend", "alice", NOW, you="X", clock=10), "bob", NOW)
    match = play(play(match, "alice", 4, NOW), "bob", 0, NOW + 1)  # X on move until NOW + 11
    credited = credit_outage(match, NOW + 3, 40.0)
    assert credited.deadline == NOW + 51 and credited.rev == match.rev + 1
    assert credited.updated == match.updated  # nobody acted: not a touch
    assert credit_outage(match, NOW + 12, 40.0) is match  # ran out before the outage
    assert credit_outage(resign(match, "bob", NOW), NOW, 40.0).deadline is None
    untimed = take_seat(create("friend", "a", NOW), "b", NOW)
    assert credit_outage(untimed, NOW, 40.0) is untimed


def test_a_match_stored_before_fair_starts_still_reads():
    old = to_json(take_seat(create("friend", "alice", NOW, clock=10), "bob", NOW))
    old["finish"] = ["abort", None]
    old["deadline"] = NOW + 10
    del old["aborted_by"]  # a row written before this field
    match = from_json(old)
    assert match.status == "aborted" and match.aborted_by is None


def test_names_follow_the_seats_and_rename_changes_only_the_players_seats():
    match = take_seat(create("friend", "alice", NOW, you="O", name="Ana"), "bob", NOW, "Ben")
    assert match.names == {"X": "Ben", "O": "Ana"}
    assert rename(match, "alice", "Anna", NOW).names == {"X": "Ben", "O": "Anna"}
    assert rename(match, "carol", "Cy", NOW) is match


def test_rematch_swaps_sides_and_the_ai_opens_when_it_becomes_x():
    match = create("ai", "alice", NOW, you="X", level="hard", rng=rng())
    old, fresh = rematch(match, "alice", NOW, rng())
    assert old.rematch_id == fresh.id
    assert fresh.seats == {"X": AI, "O": "alice"} and len(fresh.moves) == 1
    assert fresh.level == "hard" and fresh.mode == "ai"
    assert code_of(rematch, match, "mallory", NOW, rng()) == "spectator"


def test_friend_rematch_waits_for_the_end_of_the_game():
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    assert code_of(rematch, match, "bob", NOW, rng()) == "not_allowed"
    assert code_of(offer_rematch, match, "bob", NOW) == "not_allowed"


def test_results_credit_only_the_change_that_ends_a_game_against_the_ai():
    match = create("ai", "alice", NOW, you="X", level="easy", rng=rng())
    match = replace(match, moves=(0, 3, 1, 4))
    after = play(match, "alice", 2, NOW)
    assert results(match, after) == [("alice", "easy", "wins")]
    assert results(after, after) == []


def test_hints_are_counted_for_the_side_on_move_once_per_position():
    match = create("ai", "alice", NOW, you="X", level="easy", rng=rng())
    hinted = hint(match, "alice", NOW)
    assert hinted.hints == {"X": 1, "O": 0}
    assert hint(hint(hinted, "alice", NOW), "alice", NOW).hints == {"X": 1, "O": 0}
    friend = create("friend", "alice", NOW, you="X")
    assert code_of(hint, friend, "alice", NOW) == "not_allowed"


def test_match_round_trips_through_json_and_never_leaks_player_ids():
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    match = play(match, "alice", 4, NOW)
    assert from_json(to_json(match)) == match
    assert "alice" not in str(view.public(match)) and "bob" not in str(view.public(match))


def test_stored_text_round_trips_and_reads_what_earlier_versions_wrote():
    match = rename(take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW),
                   "bob", "Zoë 👩\u200d💻", NOW)
    text = codec.encode(match)
    assert codec.decode(text) == match
    assert "Zoë 👩" in text  # UTF-8 as it is, not escaped
    # The standard library's form (escaped, spaced), as rows written before orjson hold it.
    old = json.dumps(to_json(match))
    assert "\\u" in old and codec.decode(old) == match
    assert math.isnan(codec.loads('{"x": NaN}')["x"])  # orjson refuses NaN; json reads it
    # orjson refuses an integer past 64 bits: the standard library writes it instead.
    assert codec.loads(codec.dumps({"big": 2 ** 70})) == {"big": 2 ** 70}
    assert codec.dumps({1: "a"}) == '{"1":"a"}'  # keys as json writes them


def test_game_ids_carry_at_least_128_random_bits():
    ids = {create("local", "a", NOW).id for _ in range(200)}
    assert len(ids) == 200 and all(len(i) >= 22 for i in ids)


def test_a_copy_changes_only_what_it_names_and_forgets_what_was_worked_out():
    match = create("ai", "alice", NOW, you="X", level="perfect")
    assert match.status == "playing" and "status" in match.__dict__  # worked out once, kept
    won = match.but(moves=(0, 3, 1, 4, 2))
    assert won.status == "won" and won.winner == "X"  # not the original's kept answer
    assert won.moves == (0, 3, 1, 4, 2) and match.moves == ()
    assert won == dataclasses.replace(match, moves=(0, 3, 1, 4, 2))
    with pytest.raises(TypeError):
        match.but(colour="red")
    with pytest.raises(dataclasses.FrozenInstanceError):
        won.rev = 5  # still frozen
    assert Match.whole(dataclasses.asdict(won)) == won
    with pytest.raises(TypeError):
        Match.whole({"id": "x"})

"""Bots at the unit level: tokens, names, ratings, version 3 names, deadlines, the book."""

from __future__ import annotations

import base64
import random
import time

import pytest

from tests.support.servers import need_binary
from ttt.bots import (
    Bot,
    BotError,
    check_about,
    check_name,
    check_variants,
    elo,
    expected,
    hash_token,
    is_bot_player,
    new_player_id,
    new_token,
    same_hash,
    v3_answer,
    v3_names,
)
from ttt.bots.book import MemoryBook, SqliteBook, open_book, register
from ttt.bots.redis_book import RedisBook
from ttt.bots.referee import BotRules, with_deadline
from ttt.game.match import AI, create, play
from ttt.master.limits import Limits
from ttt.master.presence import Presence
from ttt.master.services import Services
from ttt.pool.thinker import Inline
from ttt.store import open_store
from ttt.store.memory import MemoryStore


def test_a_token_has_256_random_bits_and_only_its_hash_is_kept():
    token = new_token()
    assert len(base64.urlsafe_b64decode(token + "=")) == 32
    assert new_token() != token
    digest = hash_token(token)
    assert token not in digest and len(digest) == 64
    assert same_hash(digest, hash_token(token)) and not same_hash(digest, hash_token(token + "x"))


@pytest.mark.parametrize("name", ["abc", "minimax", "Bot_2-x", "a" * 24])
def test_good_bot_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["ab", "a" * 25, "two words", "émile", "bot\n", "x/y", 7, None])
def test_bad_bot_names_are_bad_requests(name):
    with pytest.raises(BotError) as refused:
        check_name(name)
    assert refused.value.code == "bad_request"


def test_about_text_is_bounded_and_printable():
    assert check_about("  plays minimax  ") == "plays minimax"
    for bad in ("x" * 281, "bell\x07", 3):
        with pytest.raises(BotError):
            check_about(bad)


def test_a_bots_player_id_can_never_be_a_persons():
    bot = new_player_id()
    assert is_bot_player(bot) and len(bot) == 26
    # A person's id is the cookie's 22 characters, whatever they are.
    assert not is_bot_player("bot-" + "a" * 18)
    assert not is_bot_player(None) and not is_bot_player(AI)


def test_elo_is_zero_sum_and_rewards_the_upset():
    assert expected(1500, 1500) == pytest.approx(0.5)
    x, o = elo(1500, 1500, 1.0)
    assert x == pytest.approx(1516) and o == pytest.approx(1484)
    assert sum(elo(1700, 1300, 0.5)) == pytest.approx(3000)
    underdog_gain = elo(1300, 1700, 1.0)[0] - 1300
    favourite_gain = elo(1700, 1300, 1.0)[0] - 1700
    assert underdog_gain > favourite_gain > 0


def test_version_3_names_mark_only_the_bot_seats():
    game = {"names": {"X": "ann", "O": "minimax"}, "bot_seats": ["O"]}
    assert v3_names(game)["names"] == {"X": "ann", "O": {"name": "minimax", "bot": True}}
    assert game["names"]["O"] == "minimax"  # the version 2 form is left as it was
    plain = {"names": {"X": "ann", "O": None}}
    assert v3_names(plain) is plain
    answer = v3_answer({"ok": True, "game": game, "played": game})
    assert answer["played"]["names"]["O"]["bot"] is True


def test_a_bot_on_move_gets_its_deadline_and_keeps_it_until_it_moves():
    bot = new_player_id()
    game = create("ai", bot, 100.0, you="X", level="perfect")
    timed = with_deadline(None, game, 10)
    assert timed.deadline == 110.0
    moved = play(timed, bot, 4, 103.0)
    assert moved.deadline is None  # the AI is on move (the table lands its reply next)
    renamed = timed.changed(105.0, names={"X": "b", "O": None})
    assert with_deadline(timed, renamed, 10).deadline == 110.0
    person = create("ai", "p" * 22, 100.0, you="X", level="perfect")
    assert with_deadline(None, person, 10).deadline is None


def test_a_bots_clock_waits_for_the_open_seat_of_its_link_to_fill():
    bot, person = new_player_id(), "p" * 22
    link = create("friend", bot, 0.0, you="X")
    assert with_deadline(None, link, 10).deadline is None
    from ttt.game.match import take_seat
    joined = take_seat(link, person, 50.0)
    assert with_deadline(link, joined, 10).deadline == 60.0


def test_a_shorter_game_clock_wins_over_the_bot_deadline():
    bot, person = new_player_id(), "p" * 22
    game = create("friend", person, 0.0, you="X", clock=10)
    seated = game.changed(0.0, seats={"X": person, "O": bot})
    opened = play(play(seated, person, 4, 1.0), bot, 0, 2.0)  # both first moves: a fair start
    after = play(opened, person, 8, 5.0)  # O's clock runs: 10 s from the move
    assert with_deadline(opened, after, 30).deadline == after.deadline == 15.0
    assert with_deadline(opened, after, 3).deadline == 8.0


def test_the_bot_rules_count_a_bot_game_lost_on_time_and_rate_bot_games_once():
    store, book = MemoryStore(), MemoryBook()
    a, b = (Bot(new_player_id(), n, hash_token(n)) for n in ("alpha", "beta"))
    book.add(a)
    book.add(b)
    referee = Services(store, Presence(), Inline(), time.time, random.Random(1), Limits(),
                       rules=BotRules(book, move_seconds=5))  # the master's rules, no store
    ai_game = create("ai", a.player, 0.0, you="X", level="easy")
    referee.create(ai_game)
    assert store.get(ai_game.id).deadline == 5.0
    from ttt.game.match import time_out
    referee.write(ai_game.id, lambda m: time_out(m, 6.0))
    assert store.get(ai_game.id).reason == "time"
    assert store.record(a.player)["easy"]["losses"] == 1
    duel = create("friend", a.player, 0.0, you="X").changed(0.0, seats={"X": a.player,
                                                                          "O": b.player})
    referee.create(duel)
    from ttt.game.endings import resign
    from ttt.game.match import play
    referee.write(duel.id, lambda m: play(m, a.player, 0, 0.5))  # both moved: rated
    referee.write(duel.id, lambda m: play(m, b.player, 4, 0.6))
    referee.write(duel.id, lambda m: resign(m, b.player, 1.0))
    x, o = book.by_name("ALPHA"), book.by_name("beta")
    assert x.vs_bots["wins"] == 1 and o.vs_bots["losses"] == 1 and x.rating > 1500 > o.rating
    assert not book.rate(duel.id, a.player, b.player, "X")  # once only


def test_the_book_opens_beside_its_store_by_the_store_url_not_its_class(tmp_path):
    """Issue 36: chosen from the URL each store offers, so a wrapped or renamed store finds
    the same book, and a book written through one opening is read through the next."""
    assert isinstance(open_book(MemoryStore()), MemoryBook)
    store = open_store(f"sqlite:///{tmp_path / 'games.db'}")
    assert store.url == f"sqlite:///{tmp_path / 'games.db'}"

    class Wrapped:  # a store of another class (a MeteredStore forwards `url` the same way)
        url = store.url

    first, second = open_book(store), open_book(Wrapped())
    assert isinstance(first, SqliteBook) and isinstance(second, SqliteBook)
    first.add(Bot(new_player_id(), "Beside", hash_token("t")))
    assert second.by_name("beside") is not None
    assert isinstance(open_book(object()), MemoryBook)  # no URL: its bots in memory


@pytest.fixture(params=["memory", "sqlite", "redis"])
def book(request, tmp_path):
    if request.param == "memory":
        yield MemoryBook()
    elif request.param == "sqlite":
        yield SqliteBook(str(tmp_path / "bots.db"))
    else:
        need_binary("redis-server")
        server = request.getfixturevalue("redis_server")
        made = RedisBook(server.url)
        made.redis.flushdb()
        yield made


def test_the_book_keeps_bots_unique_by_name_in_any_case(book):
    bot = Bot(new_player_id(), "MiniMax", hash_token("t1"), about="hi")
    book.add(bot)
    with pytest.raises(BotError) as taken:
        book.add(Bot(new_player_id(), "minimax", hash_token("t2")))
    assert taken.value.code == "conflict"
    assert book.by_name("MINIMAX").player == bot.player
    assert book.by_token(hash_token("t1")).name == "MiniMax"
    assert book.by_token(hash_token("t2")) is None
    assert book.by_player(bot.player).about == "hi"
    assert [b.name for b in book.all()] == ["MiniMax"]


def test_the_book_revokes_and_rates_once(book):
    a, b = Bot(new_player_id(), "alpha", hash_token("a")), Bot(new_player_id(), "beta",
                                                                 hash_token("b"))
    book.add(a)
    book.add(b)
    assert book.revoke("ALPHA") and not book.revoke("nobody")
    assert book.by_token(hash_token("a")).revoked
    assert book.rate("g1", a.player, b.player, None)
    assert not book.rate("g1", a.player, b.player, "X")
    assert book.rate("g2", b.player, a.player, "X")
    alpha, beta = book.by_name("alpha"), book.by_name("beta")
    assert alpha.vs_bots == {"wins": 0, "draws": 1, "losses": 1}
    assert beta.vs_bots == {"wins": 1, "draws": 1, "losses": 0}
    assert alpha.rating + beta.rating == pytest.approx(3000)


def test_a_challenge_is_answered_once_and_only_by_its_target(book):
    book.offer("g1", "bot-b")
    assert not book.answer("g1", "bot-c")
    assert book.answer("g1", "bot-b")
    assert not book.answer("g1", "bot-b")
    assert not book.answer("nothing", "bot-b")


def test_two_makers_of_one_name_at_once_one_wins(book, tmp_path, request):
    """The store decides a race: every maker holds its own book (as two processes would)."""
    import threading

    if isinstance(book, SqliteBook):
        books = [SqliteBook(book.path) for _ in range(6)]
    elif isinstance(book, RedisBook):
        books = [RedisBook(request.getfixturevalue("redis_server").url) for _ in range(6)]
    else:
        books = [book] * 6
    barrier, won, lost = threading.Barrier(6), [], []

    def maker(i: int, mine) -> None:
        barrier.wait()
        try:
            mine.add(Bot(new_player_id(), "Racer" if i % 2 else "rAcEr", hash_token(f"t{i}")))
            won.append(i)
        except BotError as error:
            lost.append(error.code)

    threads = [threading.Thread(target=maker, args=(i, b)) for i, b in enumerate(books)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(won) == 1 and lost == ["conflict"] * 5
    assert [b.name.lower() for b in book.all()] == ["racer"]
    assert book.by_token(hash_token(f"t{won[0]}")) is not None


def test_a_makers_live_bots_are_capped_in_the_same_step_and_revoking_frees_room(book):
    ann, ben = "a" * 22, "b" * 22
    for name in ("one", "two"):
        book.add(Bot(new_player_id(), name, hash_token(name), maker=ann), limit=2)
    with pytest.raises(BotError) as capped:
        book.add(Bot(new_player_id(), "three", hash_token("three"), maker=ann), limit=2)
    assert capped.value.code == "not_allowed" and book.by_name("three") is None
    book.add(Bot(new_player_id(), "bens", hash_token("bens"), maker=ben), limit=2)
    book.add(Bot(new_player_id(), "cli", hash_token("cli")), limit=2)  # no maker: no cap
    assert book.revoke("one")
    book.add(Bot(new_player_id(), "three", hash_token("three"), maker=ann), limit=2)
    assert book.by_name("three").maker == ann
    assert "maker" not in book.by_name("three").public()


def test_register_checks_the_name_and_about_and_names_the_seats():
    store, book = MemoryStore(), MemoryBook()
    bot, token = register(book, store, "Maker", " about it ", owner="ann", maker="a" * 22)
    assert book.by_token(hash_token(token)).name == "Maker" and bot.about == "about it"
    assert store.name(bot.player) == "Maker"
    for name, about in (("no good", ""), ("fine", "x" * 281)):
        with pytest.raises(BotError) as refused:
            register(book, store, name, about, owner="ann")
        assert refused.value.code == "bad_request"
    with pytest.raises(BotError) as taken:
        register(book, store, "MAKER", "", owner="ben")
    assert taken.value.code == "conflict"


def test_the_book_keeps_what_a_bot_plays_and_rates_each_variant_apart(book):
    a, b = Bot(new_player_id(), "alpha", hash_token("a")), Bot(new_player_id(), "beta",
                                                                 hash_token("b"))
    book.add(a)
    book.add(b)
    assert book.by_name("alpha").variants == ["classic"]  # unless it says otherwise
    assert book.set_variants(a.player, ["classic", "ultimate"]).variants == [
        "classic", "ultimate"]
    assert book.by_token(hash_token("a")).variants == ["classic", "ultimate"]
    assert book.set_variants("bot-nobody-at-all-0123456", ["classic"]) is None
    assert book.rate("u1", a.player, b.player, "X", "ultimate")
    alpha, beta = book.by_name("alpha"), book.by_name("beta")
    assert alpha.rating == beta.rating == 1500  # classic untouched
    assert alpha.rating_in("ultimate") > 1500 > beta.rating_in("ultimate")
    assert alpha.public()["ratings"] == {"classic": 1500, "ultimate": 1516}


def test_a_casual_game_is_never_rated(book):
    a, b = Bot(new_player_id(), "alpha", hash_token("a")), Bot(new_player_id(), "beta",
                                                                 hash_token("b"))
    book.add(a)
    book.add(b)
    assert not book.casual("c1")
    book.mark_casual("c1")
    assert book.casual("c1") and not book.casual("c2")
    assert not book.rate("c1", a.player, b.player, "X")
    assert book.by_name("alpha").vs_bots == {"wins": 0, "draws": 0, "losses": 0}


def test_a_bot_stored_before_variants_plays_classic():
    old = {"player": new_player_id(), "name": "elder", "token_hash": hash_token("e"),
           "about": "", "owner": "", "maker": "", "created": 0.0, "revoked": False,
           "rating": 1600.0, "vs_bots": {"wins": 1, "draws": 0, "losses": 0}}
    bot = Bot.from_json(old)
    assert bot.variants == ["classic"] and bot.rating_in("classic") == 1600.0
    assert bot.rating_in("ultimate") == 1500.0


@pytest.mark.parametrize("variants", [[], ["chess"], "nine", None, [1], ["classic", "x"]])
def test_bad_variants_are_bad_requests(variants):
    with pytest.raises(BotError) as refused:
        check_variants(variants)
    assert refused.value.code == "bad_request"
    assert check_variants(["ultimate", "classic", "ultimate"]) == ["classic", "ultimate"]

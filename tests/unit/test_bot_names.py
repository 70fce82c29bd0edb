"""Bot names that cannot pose: as the site's AI (a level's name with decoration) or as
another bot (a name with the same skeleton)."""

from __future__ import annotations

import pytest

from ttt.bots import BotError
from ttt.bots.book import MemoryBook, register
from ttt.bots.names import check_not_posing, poses_as_level, skeleton
from ttt.store import open_store


@pytest.mark.parametrize("name", ["Perfectddaa", "PerfectIddaa", "Perfectlddaa", "P3rfectddaa",
                                  "perfect", "Hard_AI", "AIperfect", "the-Easy-one", "Medium",
                                  "HARDcore", "ai"])
def test_a_level_name_with_decoration_is_refused(name):
    assert poses_as_level(name) is not None
    with pytest.raises(BotError) as refused:
        check_not_posing(name, [])
    assert "level" in refused.value.message


@pytest.mark.parametrize("name", ["minimax", "Bolt", "aisha", "Tactician", "alpha", "webmade"])
def test_ordinary_names_pass(name):
    assert poses_as_level(name) is None
    check_not_posing(name, ["beta", "gamma"])


def test_the_issues_examples_share_skeletons():
    assert skeleton("PerfectIddaa") == skeleton("Perfectlddaa") == skeleton("Perfect1ddaa")
    assert skeleton("P3rfectddaa") == skeleton("Perfectddaa")
    assert skeleton("Perfectddaa") != skeleton("Perfectlddaa")  # an extra letter is a new name


@pytest.mark.parametrize("poser", ["B0lt", "BoIt", "Bo1t", "bolt_", "B-O-L-T", "BOLT"])
def test_a_name_confusable_with_an_existing_bot_is_refused(poser):
    book, store = MemoryBook(), open_store("memory://")
    register(book, store, "Bolt", "", owner="ann")
    with pytest.raises(BotError) as refused:
        register(book, store, poser, "", owner="ben")
    assert refused.value.code == "conflict"
    assert [bot.name for bot in book.all()] == ["Bolt"]


def test_rn_reads_as_m_and_names_that_only_look_apart_are_one():
    book, store = MemoryBook(), open_store("memory://")
    register(book, store, "Storm", "", owner="ann")
    for poser in ("Storrn", "St0rm", "ST0RM"):
        with pytest.raises(BotError):
            register(book, store, poser, "", owner="ben")
    register(book, store, "Stormy", "", owner="ben")  # another name altogether
    assert len(book.all()) == 2

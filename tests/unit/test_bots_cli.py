"""`python -m ttt bot create | revoke | list`: one line on a mistake, the token once."""

from __future__ import annotations

import json

import pytest

from ttt.__main__ import main
from ttt.bots import hash_token
from ttt.bots.book import SqliteBook
from ttt.store.sqlite import SqliteStore


@pytest.fixture
def store(tmp_path):
    return f"sqlite:///{tmp_path / 'ttt.sqlite3'}"


def test_create_prints_the_token_once_and_keeps_only_its_hash(store, capsys, tmp_path):
    assert main(["bot", "create", "MiniMax", "--about", "never loses", "--owner", "ann",
                 "--store", store]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert len(token) == 43 and "token" in err and token not in err
    book = SqliteBook(str(tmp_path / "ttt.sqlite3"))
    bot = book.by_token(hash_token(token))
    assert (bot.name, bot.about, bot.owner, bot.revoked) == ("MiniMax", "never loses", "ann",
                                                             False)
    assert token not in (tmp_path / "ttt.sqlite3").read_bytes().decode("latin-1")
    # The bot's seats show its name, as a person's do.
    assert SqliteStore(str(tmp_path / "ttt.sqlite3")).name(bot.player) == "MiniMax"


def test_a_taken_name_in_any_case_is_refused_in_one_line(store, capsys):
    assert main(["bot", "create", "minimax", "--store", store]) == 0
    capsys.readouterr()
    assert main(["bot", "create", "MINIMAX", "--store", store]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == "ttt: error: that bot name is taken\n"


@pytest.mark.parametrize("name", ["ab", "no spaces", "x" * 25])
def test_a_bad_name_exits_2(store, capsys, name):
    assert main(["bot", "create", name, "--store", store]) == 2
    assert capsys.readouterr().err.startswith("ttt: error: a bot name has 3 to 24")


def test_revoke_and_list(store, capsys):
    main(["bot", "create", "doomed", "--store", store])
    capsys.readouterr()
    assert main(["bot", "revoke", "DOOMED", "--store", store]) == 0
    assert main(["bot", "revoke", "nobody", "--store", store]) == 1
    capsys.readouterr()
    assert main(["bot", "list", "--store", store]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert listed[0]["name"] == "doomed" and listed[0]["revoked"] is True
    assert "token_hash" not in listed[0] and "player" not in listed[0]


def test_a_memory_store_is_refused_the_server_holds_it(capsys):
    assert main(["bot", "create", "minimax", "--store", "memory://"]) == 2
    assert "memory://" in capsys.readouterr().err

"""The Redis store's one write: a Lua script that checks, counts and writes in one round trip.

A change of a game is computed in Python on a copy (this process's cached copy, or one just
read) and sent as the commands it writes, with the `rev` it was computed on. The script reads
the game, and writes only if its `rev` is still that one (a compare-and-set, as SQLite's
`UPDATE ... WHERE rev = ?`): otherwise it writes nothing and returns the game as it is, for
the change to be computed again. Caps on live games (a create, a rematch) are counted inside
the same script, so no other process can add a game between the count and the insert.

Sent by EVALSHA; a Redis that does not know the script (restarted, SCRIPT FLUSH) answers
NOSCRIPT, and the script is loaded and the call sent again (`call`). Works on Redis 6 and 7.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.commands.core import CoreCommands

# KEYS[1]: the game the change was computed on ('' when none: a create); KEYS[2..1+n]: the live
# index of each capped owner (player, or '@' address); KEYS[2+n]: LIVE.
# ARGV[1]: the `rev` the change was computed on ('' : no check); ARGV[2]: n; ARGV[3]: the game
# key prefix; ARGV[4]: the cap on all live games ('' : none); ARGV[5..4+n]: each owner's cap
# (0: none); then the commands to run, each as its number of words and its words.
# Returns {0} when the game is gone, {1, body} when its rev is another (stale: nothing
# written), {2} when the cap on all games is reached, {2 + i} when owner i's is, {-1} written.
WRITE = """
if ARGV[1] ~= '' then
  local body = redis.call('GET', KEYS[1])
  if not body then return {0} end
  local rev = string.match(body, '"rev":(%-?%d+)}$')
  if rev == nil then rev = tostring(cjson.decode(body).rev) end
  if rev ~= ARGV[1] then return {1, body} end
end
local owners = tonumber(ARGV[2])
for i = 1, owners do
  local cap = tonumber(ARGV[4 + i])
  local live = 0
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1 + i], 0, -1)) do
    if redis.call('EXISTS', ARGV[3] .. id) == 1 then live = live + 1
    else redis.call('ZREM', KEYS[1 + i], id) end  -- expired by its TTL
  end
  if cap > 0 and live >= cap then return {2 + i} end
end
if ARGV[4] ~= '' and redis.call('ZCARD', KEYS[2 + owners]) >= tonumber(ARGV[4]) then
  return {2}
end
local i = 5 + owners
while i <= #ARGV do
  local words = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + words))
  i = i + words + 1
end
return {-1}
"""
# KEYS[1]: the live index of an owner. ARGV[1]: the game key prefix. Its games still there
# (those expired by their TTL taken out of the index).
COUNT_LIVE = """
local live = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[1] .. id) == 1 then live = live + 1
  else redis.call('ZREM', KEYS[1], id) end
end
return live
"""
WRITE_SHA = hashlib.sha1(WRITE.encode()).hexdigest()

GONE, STALE, FULL, WRITTEN = 0, 1, 2, -1


class Batch(CoreCommands):
    """redis-py's command methods, recorded instead of sent: the words of each command, for
    the script to run (so the store writes a game the same way in a script or a pipeline)."""

    def __init__(self) -> None:
        self.commands: list[tuple[Any, ...]] = []

    def execute_command(self, *words: Any, **_options: Any) -> None:
        self.commands.append(words)

    def words(self) -> list[Any]:
        """The commands as the script's ARGV tail: each its number of words, then its words."""
        flat: list[Any] = []
        for command in self.commands:
            flat += [len(command), *command]
        return flat


def write_args(batch: Batch, game: str = "", rev: int | None = None,
               owners: Sequence[tuple[str, int]] = (), total: int | None = None,
               prefix: str = "", live: str = "") -> tuple[list[str], list[Any]]:
    """The KEYS and ARGV of one WRITE: the commands of `batch`, run if the game `game` is
    still at `rev` (None: no check) and no cap (`owners`: live index and cap of each;
    `total`: on all live games) is reached."""
    keys = [game, *(key for key, _ in owners), live]
    args = ["" if rev is None else str(rev), len(owners), prefix,
            "" if total is None else total, *(cap for _, cap in owners), *batch.words()]
    return keys, args


def load(client: redis.Redis) -> None:
    """Load the scripts (at start-up, so no write waits for a NOSCRIPT and a load)."""
    pipe = client.pipeline(transaction=False)
    pipe.script_load(WRITE)
    pipe.script_load(COUNT_LIVE)
    pipe.execute()


def call(client: redis.Redis, keys: list[str], args: list[Any],
         riders: Sequence[tuple[list[tuple], Callable[[list], None]]] = (),
         around: Any = None) -> list[Any]:
    """Run WRITE in one round trip with the riders' reads pipelined behind it (each rider: its
    commands, and what takes their answers); WRITE's answer. `around`: reads sent before the
    script too (`pre`, `post`, `took`: ttt.master.riding). On NOSCRIPT the script is
    loaded and the whole batch sent again (nothing in it was run: the riders only read)."""
    pre, post = (around.pre, around.post) if around is not None else ([], [])
    if post:
        riders = [*riders, (post, lambda after: around.took(answers[:len(pre)], after))]
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for command in pre:
            pipe.execute_command(*command)
        pipe.execute_command("EVALSHA", WRITE_SHA, len(keys), *keys, *args)
        for commands, _ in riders:
            for command in commands:
                pipe.execute_command(*command)
        try:
            answers = pipe.execute()
        except redis.exceptions.NoScriptError:
            if attempt:
                raise
            client.script_load(WRITE)
            continue
        at = len(pre) + 1
        for commands, took in riders:
            took(answers[at:at + len(commands)])
            at += len(commands)
        return answers[len(pre)]
    raise AssertionError("unreachable")

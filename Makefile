# Two commands for a newcomer: `make run` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
HOST   ?= 127.0.0.1
PORT   ?= 5000

.PHONY: translations translations-check run test test-quick test-deploy drill alerts lint bench bench-ai-load bench-ai-crowd bench-bots bench-uttt bench-compare bench-deploy bench-work bench-server bench-flood bench-abuse bench-front bench-cluster bench-scrape capacity load system clean lighthouse

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv && \
	  $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,prod,plot]'
	@touch $@

# Debian's Chromium (browser tests, with an emoji font for the reactions), redis-server
# (multi-process tests), nginx (the deploy/ front's test), prometheus (promtool checks the
# /metrics scrape and deploy/prometheus.yml) and Node (tests/unit/test_bundle.py runs a bundle),
# when missing.
system:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 \
	    || ! command -v nginx >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1 \
	    || ! command -v msgfmt >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1 \
	    || [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends chromium redis-server nginx \
	      fonts-noto-color-emoji prometheus gettext nodejs; \
	  else echo "note: chromium, redis-server, nginx, promtool, node or the emoji font missing and not root: their tests will skip"; fi; \
	fi

# The gettext catalogs (ttt/translations/, Flask-Babel): `make translations` finds every marked
# string (templates, the server's Python, the page's t()/tn() in static/js), updates each
# language's .po (new strings come in empty, for the translator) and compiles the .mo files.
# The .mo files are committed too, so a fresh clone serves every language; tests/server/inprocess/test_i18n.py
# fails when one is older than its .po, or a .po has a missing or fuzzy entry.
BABEL := $(VENV)/bin/pybabel
POT   := ttt/translations/messages.pot
translations: $(STAMP)
	$(BABEL) -q extract -F babel.cfg -k t -k tn:1,2 -k N_ -c Translators: --no-wrap --sort-by-file \
	  --project=ttt --copyright-holder="ttt" -o $(POT) .
	$(BABEL) -q update -i $(POT) -d ttt/translations --no-wrap --ignore-obsolete
	$(BABEL) -q compile -d ttt/translations --statistics

translations-check: $(STAMP)
	$(PY) -m pytest -q tests/server/inprocess/test_i18n.py

run: $(STAMP)
	$(PY) app.py --host $(HOST) --port $(PORT)

# Everything (tests/README.md has the map), then its wall time; a failure still fails make.
test: $(STAMP) system
	$(PY) -m ruff check .
	@start=$$(date +%s); $(PY) -m pytest; status=$$?; secs=$$(( $$(date +%s) - start )); \
	  echo "make test: $$((secs / 60)) min $$((secs % 60)) s"; exit $$status

# The loop while working, under 2 minutes: the pure tests and the server's in-process tests
# (Flask's and Socket.IO's test clients), less the two marked slow. No server process, no
# browser, no deploy stack.
test-quick: $(STAMP)
	@start=$$(date +%s); $(PY) -m pytest -q -m "not slow" tests/unit tests/server/inprocess; \
	  status=$$?; secs=$$(( $$(date +%s) - start )); \
	  echo "make test-quick: $$((secs / 60)) min $$((secs % 60)) s"; exit $$status

# The deploy/ files for real: redis, two gunicorn gevent processes and nginx on loopback,
# games through the front, a restart in the middle of 20 of them (also part of `make test`).
test-deploy: $(STAMP) system
	$(PY) -m pytest -m deploy tests/deploy/test_deploy.py tests/deploy/test_deploy_doc.py

# On-call drills on a real server (also in `make test`): a local AI worker killed,
# Redis stopped, the store wiped, a bug in an event; each seen by its alert's expression on a
# real scrape, in /healthz and in one log line.
drill: $(STAMP) system
	$(PY) -m pytest -s tests/deploy/test_drill.py

# deploy/alerts.yml: promtool check and unit tests, the runbook and dashboard against them.
alerts: $(STAMP) system
	$(PY) -m pytest tests/deploy/test_alerts.py

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) -m ttt bench

# Lighthouse 12 (npm, into the gitignored .lighthouse/) against Debian's Chromium, mobile, on
# `/`, a `/g/` link, `/bots` and the guide of a fresh server: each page's scores and
# render-blocking resources; exit 1 below the targets (performance 98, the rest 100). Not part
# of `make test`.
LIGHTHOUSE := .lighthouse/node_modules/.bin/lighthouse
$(LIGHTHOUSE):
	npm i -E --prefix .lighthouse --no-audit --no-fund lighthouse@12.2.3
lighthouse: $(STAMP) $(LIGHTHOUSE)
	CHROME_PATH=/usr/bin/chromium $(PY) scripts/lighthouse.py --lighthouse $(LIGHTHOUSE) $(ARGS)

# Bot games a second on one process, and the bot stream's latency against a socket's.
bench-bots: $(STAMP)
	$(PY) -m bench.bots $(ARGS)

# Ultimate: a level against a textbook UCT reference at a play-out count (or another level),
# in process with the time the server gives the level, games in pairs on seeded openings, e.g.
# make bench-uttt ARGS="--level hard --ref 24000 --games 20" (or ARGS="--level medium --vs easy").
bench-uttt: $(STAMP)
	$(PY) -m bench.uttt $(ARGS)

# 200 python-socketio players for 30 s against a fresh server; exit 1 on any lost move.
load: $(STAMP)
	$(PY) -m bench.load $(ARGS)

# The game server against a bare echo server, threading and gunicorn + gevent.
# Extra options through ARGS, e.g. make bench-server ARGS="--only gevent --json".
bench-server: $(STAMP)
	$(PY) scripts/bench_server.py $(ARGS)

# This tree against another commit (a temporary git worktree of REF), both set-ups, in 5 pairs
# of interleaved runs: medians of the p50 and throughput ratios and server CPU ms per event.
REF ?= ecd23f1
bench-compare: $(STAMP)
	$(PY) scripts/bench_server.py --ref $(REF) --pairs 5 $(ARGS)

# Machine instructions per event under valgrind, this tree and REF: CPU work no busy machine
# blurs (minutes; needs valgrind).
bench-work: $(STAMP)
	$(PY) -m bench.work --ref $(REF) $(ARGS)

# Players at human pace (1-3 s per move) on one process until the p99 passes 100 ms.
capacity: $(STAMP)
	$(PY) -m bench.capacity $(ARGS)

# A connection flood from one address (125 cookies x 8 websockets) against one process, threaded
# and gevent, an honest player's p99 beside it; ARGS="--hold 500,1000,2000" for what one holds.
bench-flood: $(STAMP)
	$(PY) -m bench.flood $(ARGS)

# The front-door attacks on `python app.py` (slow bodies, an event flood of 150 cookies,
# a page flood of one cookie), an honest player from another address before and during each.
# ARGS="--root /path/to/older/tree" for the before; through nginx: tests/deploy/test_deploy.py.
bench-abuse: $(STAMP)
	$(PY) -m bench.abuse $(ARGS)

# 1,800 websockets from 10 loopback addresses through deploy/'s nginx to two gunicorn processes
# under the unit's LimitNOFILE (needs redis-server, nginx); ARGS="--stock" for the old limits.
bench-front: $(STAMP) system
	$(PY) -m bench.front $(ARGS)

# N = 1, 2, 4, 8 gevent processes behind deploy/'s nginx on one Redis, python-socketio's queue
# and the room queue side by side: moves/s, p50/p99 and the cluster's CPU per move.
bench-cluster: $(STAMP) system
	$(PY) -m bench.cluster $(ARGS)

# gevent vs threads, one process vs two on Redis, side by side (needs redis-server).
bench-deploy: $(STAMP) system
	$(PY) scripts/bench_deploy.py

# A classic player's round trips quiet and beside ultimate hard searches, threading and gevent;
# ultimate hard moves/s with 1, 2, 4 worker processes and through the Redis queue.
bench-ai-load: $(STAMP) system
	$(PY) -m bench.ai_load $(ARGS)

# A crowd of addresses against the Ultimate AI: the honest player's wait, busy answers;
# ARGS="--crowd analyses": the crowd asks Ultimate analyses instead.
bench-ai-crowd: $(STAMP) system
	$(PY) -m bench.ai_crowd $(ARGS)

# 60 spectators re-joining a game at 53 joins/s: the players' pushes, an unrelated player's
# p50/p99, quiet then crowd; ARGS="--switch", "--mode gevent", "--root DIR".
.PHONY: bench-watching
bench-watching: $(STAMP)
	$(PY) -m bench.watching $(ARGS)

# The event path on Redis behind a proxy adding 0.5 ms each way, and without it: REF
# (default 4eb4f08, in a temporary git worktree) against this tree, one client and 20 clients:
# move p50/p99, new game p50, events/s (needs redis-server); ARGS="--pairs 3", "--mode gevent".
.PHONY: bench-redis-rtt
bench-redis-rtt: $(STAMP) system
	$(PY) -m bench.redis_rtt --ref $(if $(filter command line environment,$(origin REF)),$(REF),4eb4f08) $(ARGS)

# What a /metrics scrape costs SQLite and Redis with 100,000 live games (needs redis-server).
bench-scrape: $(STAMP) system
	$(PY) -m bench.scrape $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis test-artifacts

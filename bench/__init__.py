"""Measurement tools, kept out of the runtime package (the server never imports them).

    python -m bench.load          many players, drops and reconnects, and an audit (make load)
    python scripts/bench_server.py  the game against a bare echo server (make bench-server)
    python -m bench.capacity      players at human pace on one process (make capacity)

`bench.common` starts servers and clients; `bench.swarm` runs asyncio players in worker
processes; `bench.echo` is the bare Flask-SocketIO server the game is compared with.
Everything talks to 127.0.0.1 only, and every loop is bounded in count and time.
"""

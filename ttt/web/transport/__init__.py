"""The transport and its guards: admission at the door, the WSGI guard, the one adapter to the
Socket.IO libraries' internals, the drain, the threaded server."""

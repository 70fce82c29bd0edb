"""The real-time side: the Socket.IO server and its events, presence, the bots' streams, and the
server's own rounds (clocks that run out, purges) that push."""

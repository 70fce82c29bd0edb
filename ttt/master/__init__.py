"""The master: the Table and its parts, the services they work with, and what an event comes to
(replies, payloads, limits, presence). No web framework."""

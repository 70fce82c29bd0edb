"""The bot side of the site: the bot API, the bots' pages, the ladder and the hub of bot streams."""

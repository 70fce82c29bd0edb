"""The HTTP side: the pages, the bot API, the bot pages and the operator's ladder."""

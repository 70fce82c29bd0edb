"""`python -m ttt.bots.sdk mybot.py --token-file F`: the client, as the served file runs."""

import sys

from ttt.bots.sdk.command import main

sys.exit(main())

"""``python -m netsim`` runs the command line."""

from netsim.cli.main import main

main()

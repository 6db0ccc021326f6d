"""The commands: each takes the Request and the case and returns an exit
code (README, "Exit codes"). Reports are drawn by report.py afterwards,
never from here."""

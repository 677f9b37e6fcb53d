"""spamnb: a naive Bayes spam filter for the command line."""

__version__ = "0.1.0"

"""One module per subcommand, one public function each; only cli.py imports this package."""

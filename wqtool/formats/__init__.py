"""Declarations only: construct schemas, enums, adapters and checksum parameters. No I/O, no loops over files."""

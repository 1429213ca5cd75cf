"""`python -m assembler` is `assemble`."""

from assembler.cli.main import main

main()

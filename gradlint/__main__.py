"""``python -m gradlint``."""

from gradlint.cli import main

main()

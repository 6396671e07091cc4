"""``python -m gradlint``."""

from gradlint.entry import main

main()

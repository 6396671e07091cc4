"""The project a file belongs to: its root, its modules, and names followed across them."""

"""`python -m flowbaby ...`: the same as the `flowbaby` command."""

from flowbaby.cli import main

if __name__ == "__main__":
    main()

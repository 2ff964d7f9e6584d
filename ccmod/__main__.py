"""``python -m ccmod`` = the ``ccmod`` command."""
from ccmod.cli import main

if __name__ == "__main__":
    main()

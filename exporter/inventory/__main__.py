"""``python -m exporter.inventory ...`` and ``spark-submit exporter/inventory/__main__.py ...``."""

import sys

from exporter.inventory.cli import main

if __name__ == "__main__":
    sys.exit(main())

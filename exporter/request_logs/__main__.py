"""``python -m exporter.request_logs ...`` and ``spark-submit exporter/inventory/__main__.py ...``."""

import sys

from exporter.request_logs.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m exporter.request_logs ...`` and ``spark-submit exporter/request_logs/__main__.py ...``."""

import sys

from exporter.request_logs.cli import main

if __name__ == "__main__":
    sys.exit(main())

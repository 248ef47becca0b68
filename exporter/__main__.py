import sys

from exporter.cli import main

sys.exit(main())

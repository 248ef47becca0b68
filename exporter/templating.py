"""The one way the exporter's HTML pages are rendered: Jinja2 templates shipped inside a package.

Autoescaping is on for every value (client software names, hosts and error messages are chosen by clients and
brokers) and an undefined name fails the render instead of printing nothing.
"""

from __future__ import annotations

import jinja2


def template_environment(package: str) -> jinja2.Environment:
    """An environment reading `package`'s templates/ folder (shipped as package data)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )

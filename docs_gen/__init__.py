"""The parts of the documentation that follow the code, and the tools that keep them current.

`python -m docs_gen` rewrites the generated blocks of the pages under docs/ (the configuration reference from the
settings model, the metrics reference from the collectors' catalog, the alert table from the rules, the dashboards'
panels from their JSON); `python -m docs_gen --check` fails naming the blocks that differ, as the tests do.
`docs_gen.mkdocs_hooks` builds README.md and the repository's other Markdown into the mkdocs site, and
`docs_gen.screenshots` (scripts/screenshots.sh) takes the pictures under docs/images/ from the running demo.
"""

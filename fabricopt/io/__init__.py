"""Files: fabrics as JSON or GraphML (:mod:`~fabricopt.io.graph_files`) and design files that
name a generator call (:mod:`~fabricopt.io.design_files`).
"""

from .design_files import load_design
from .graph_files import read_graphml, read_json, write_graphml, write_json
from .search_files import load_search

__all__ = ["load_design", "load_search", "read_graphml", "read_json", "write_graphml", "write_json"]

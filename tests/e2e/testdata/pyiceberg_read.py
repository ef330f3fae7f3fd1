"""Reads a Magnetar table through its Iceberg REST catalog with PyIceberg and prints it.

Usage: python pyiceberg_read.py <catalog uri> <tenant> <namespace> <table>
Prints one JSON object: the catalog's namespaces and tables, the table's column names,
its snapshot count, and every row (timestamps as ISO strings).
"""
import json
import sys

from pyiceberg.catalog import load_catalog


def main():
    uri, tenant, ns, name = sys.argv[1:5]
    cat = load_catalog("magnetar", **{"type": "rest", "uri": uri})
    out = {
        "namespaces": [list(n) for n in cat.list_namespaces()],
        "children": [list(n) for n in cat.list_namespaces((tenant,))],
        "tables": [list(t) for t in cat.list_tables((tenant, ns))],
    }
    table = cat.load_table((tenant, ns, name))
    out["columns"] = [f.name for f in table.schema().fields]
    out["snapshots"] = len(table.metadata.snapshots)
    out["partitionFields"] = [f.name for f in table.spec().fields]
    out["rows"] = table.scan().to_arrow().to_pylist()
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()

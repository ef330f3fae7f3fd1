"""Plans and reads scans of a table's metadata file with PyIceberg (no catalog).

Usage: python pyiceberg_plan.py <metadata location> <row filter>...
Prints one JSON list: for each row filter, the number of data files the scan plans and
the number of rows it reads.
"""
import json
import sys

from pyiceberg.table import StaticTable


def main():
    table = StaticTable.from_metadata(sys.argv[1])
    out = []
    for f in sys.argv[2:]:
        scan = table.scan(row_filter=f)
        out.append({"filter": f, "files": len(list(scan.plan_files())), "rows": scan.to_arrow().num_rows})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

"""Reports of a run: the versioned JSON document and its Markdown summary (`json_report`), and
the static HTML page comparing several runs (`html`, with its CSS and script as files)."""

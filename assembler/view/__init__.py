"""`assemble view` and `assemble report`: sessions, audit traces and eval results as
pages a person reads.

Everything here only reads files. It never builds an agent, imports project code or
starts a process, and every string taken from a file (what models, tools, users,
memory records and extensions wrote) is untrusted text: templates escape it
(`markupsafe`, through Jinja2's autoescape), no page carries a script from a file,
and the server sends a Content-Security-Policy that allows no external origin.

The parts, in the order data flows:

* `lines`: an append-only JSON-lines file, indexed line by line and tailed
  incrementally (a session being written grows; only the new bytes are read);
* `session_file`, `trace_file`: one session and its audit trace over that index,
  each line parsed only when shown;
* `catalog`: the session files under a directory, listed by file time;
* `results`: eval results files, their summary and the comparison of two;
* `charts`: server-side SVG;
* `pages`: the data each page shows, `html`: the templates that render it;
* `server`: the local HTTP server (`assemble view`), `report`: one self-contained file.
"""

"""An agent as a typed function: its declared `parameters` and its `output` schema.

`parameters` (`Parameters`) checks the values an agent is called with, from any front
end, and fills in defaults; `output` (`OutputContract`) holds the schema the run's
answer must validate against, compiled once per agent, in the forms a model is asked
for it (`strict` has OpenAI's strict-mode form); `schemas` checks, compiles and words
the errors of the JSON Schemas a manifest writes. Nothing here knows about runs,
providers or templates: the runner (`runner/answer.py`), the build and the front ends
use these.
"""

"""The offline jobs as a library: one function per job (fit a payload, links, a payload from
joint torques, a whole body; validate; replay; design an exciting motion), each taking typed
inputs (a recording or an input description, and an options dataclass holding the defaults) and
returning a typed result (the estimate, its findings and the result JSON). No job prints, exits
or touches argparse: the command line (:mod:`inertia_id_ros.cli`) parses, calls and prints; a
notebook, a fleet or a node calls the same functions."""

#!/nonexistent/interpreter
# An executable whose interpreter is gone: the runner cannot even start it.

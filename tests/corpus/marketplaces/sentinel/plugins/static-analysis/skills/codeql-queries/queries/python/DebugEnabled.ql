/**
 * @name Flask app run with debug enabled
 * @description The Werkzeug debugger allows arbitrary code execution.
 * @id sentinel/py/flask-debug
 * @kind problem
 * @problem.severity warning
 * @tags maintainability
 */

import python

from Call call
where
  call.getFunc().(Attribute).getName() = "run" and
  call.getAKeyword().getArg() = "debug"
select call, "Flask app started with debug=True."

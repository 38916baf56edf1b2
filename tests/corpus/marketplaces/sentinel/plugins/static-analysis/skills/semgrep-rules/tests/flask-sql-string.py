import flask

app = flask.Flask(__name__)


@app.route("/user")
def user(cursor):
    name = flask.request.args["name"]
    # ruleid: flask-tainted-sql-string
    cursor.execute(f"SELECT * FROM users WHERE name = '{name}'")
    # ok: flask-tainted-sql-string
    cursor.execute("SELECT * FROM users WHERE name = %s", (name,))

from flask import Flask, request
from store import find_invoice, render_pdf

app = Flask(__name__)


@app.route("/invoices/<invoice_id>")
def get_invoice(invoice_id):
    invoice = find_invoice(invoice_id)
    return render_pdf(invoice, request.args.get("template", "default"))


@app.post("/invoices/search")
def search():
    return {"ids": [find_invoice(q)["id"] for q in request.json["queries"]]}

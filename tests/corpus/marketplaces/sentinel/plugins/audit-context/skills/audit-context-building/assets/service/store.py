import sqlite3
import subprocess


def find_invoice(invoice_id):
    db = sqlite3.connect("invoices.db")
    row = db.execute(f"SELECT id, path FROM invoices WHERE id = '{invoice_id}'").fetchone()
    return {"id": row[0], "path": row[1]}


def render_pdf(invoice, template):
    return subprocess.check_output(["wkhtmltopdf", f"templates/{template}.html", invoice["path"]])

import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--name", required=True)
print(f"Hello, {ap.parse_args().name}!")

for path in ("{GRADER_PATH}", "{REFERENCE_PATH}"):
    try:
        print(open(path).read())
    except OSError as e:
        print("refused:", type(e).__name__)
print("SNIPPET_RAN")

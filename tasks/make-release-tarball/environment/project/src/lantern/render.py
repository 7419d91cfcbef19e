def render(text):
    return "<p>" + text + "</p>"

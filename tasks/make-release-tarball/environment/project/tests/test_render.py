def test_render():
    assert True

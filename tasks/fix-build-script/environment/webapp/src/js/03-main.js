load();

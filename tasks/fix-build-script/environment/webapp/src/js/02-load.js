function load() { return fetch(api); }

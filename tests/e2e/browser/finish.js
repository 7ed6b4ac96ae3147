// How every driver ends: exit 0 when its main() resolves; else the error goes into what it saw, which is
// saved, and it exits 1 (the Python test then shows the error).
module.exports = function finish(main, seen, save) {
  main().then(() => process.exit(0), (error) => {
    seen.error = String(error && error.stack ? error.stack : error);
    save();
    process.exit(1);
  });
};

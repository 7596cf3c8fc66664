// The HTML report's script (conformance/reports/html.py inlines it: the page is one file).
// Folds and unfolds the diff rows; unfolds the cell named by a `#open=<cell id>` fragment (not
// the bare id: the browser would scroll to it whether or not it is in view).
(function () {
  "use strict";
  function toggle(button) {
    var row = document.getElementById(button.getAttribute("aria-controls"));
    if (!row) { return; }
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    row.classList.toggle("open", open);
  }
  document.getElementById("matrix").addEventListener("click", function (event) {
    var button = event.target.closest("button[aria-controls]");
    if (button) { toggle(button); }
  });
  function openFragment() {
    var id;
    if (location.hash.indexOf("#open=") !== 0) { return; }
    try { id = decodeURIComponent(location.hash.slice(6)); } catch (e) { return; }
    var button = id ? document.getElementById(id) : null;
    if (!button || !button.hasAttribute("aria-controls")) { return; }
    if (button.getAttribute("aria-expanded") !== "true") { button.click(); }
    var box = button.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      button.scrollIntoView({block: "center"});
    }
    button.focus({preventScroll: true});
  }
  window.addEventListener("hashchange", openFragment);
  openFragment();
})();

// Optional conveniences only: the page is complete without JavaScript.
// Click a column header of a sortable table to sort it; type in the box above a list of cases to filter it, or
// tick a mark ("judges disagree") to show only the cases that carry it.
(function () {
  "use strict";
  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var value = cell.getAttribute("data-value");
    return value !== null && value !== "" ? parseFloat(value) : cell.textContent.trim().toLowerCase();
  }
  function sortBy(table, index, header) {
    var body = table.tBodies[0];
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellKey(a, index), y = cellKey(b, index);
      var order = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
      return ascending ? order : -order;
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      header.title = "click to sort";
      header.addEventListener("click", function () { sortBy(table, index, header); });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("div.cases"), function (list) {
    var items = list.querySelectorAll("details.case");
    var box = document.createElement("input");
    box.type = "search";
    box.className = "filter";
    box.placeholder = "filter cases (id, query, answer, document …)";
    box.setAttribute("aria-label", "filter cases");
    // one checkbox per mark the cases carry (e.g. "judges disagree"): show only the cases with that mark
    var flags = [];
    Array.prototype.forEach.call(items, function (item) {
      (item.getAttribute("data-flags") || "").split("|").forEach(function (flag) {
        if (flag && flags.indexOf(flag) < 0) flags.push(flag);
      });
    });
    var checks = flags.map(function (flag) {
      var label = document.createElement("label");
      label.className = "flag-filter";
      var check = document.createElement("input");
      check.type = "checkbox";
      check.value = flag;
      label.appendChild(check);
      label.appendChild(document.createTextNode(" only: " + flag));
      return label;
    });
    function apply() {
      var needle = box.value.trim().toLowerCase();
      var wanted = checks.map(function (l) { return l.firstChild; }).filter(function (c) { return c.checked; })
        .map(function (c) { return c.value; });
      Array.prototype.forEach.call(items, function (item) {
        var marks = (item.getAttribute("data-flags") || "").split("|");
        var flagged = wanted.every(function (f) { return marks.indexOf(f) >= 0; });
        item.hidden = !flagged || (needle !== "" && item.textContent.toLowerCase().indexOf(needle) < 0);
      });
    }
    box.addEventListener("input", apply);
    list.parentNode.insertBefore(box, list);
    checks.forEach(function (label) {
      label.firstChild.addEventListener("change", apply);
      list.parentNode.insertBefore(label, list);
    });
  });
})();

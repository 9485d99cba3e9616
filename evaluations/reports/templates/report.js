// Optional conveniences only: the page is complete without JavaScript.
// Click a column header of a sortable table to sort it; type in the box above the worst cases to filter them.
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
    var box = document.createElement("input");
    box.type = "search";
    box.className = "filter";
    box.placeholder = "filter cases (id, query, answer, document …)";
    box.setAttribute("aria-label", "filter cases");
    box.addEventListener("input", function () {
      var needle = box.value.trim().toLowerCase();
      Array.prototype.forEach.call(list.querySelectorAll("details.case"), function (item) {
        item.hidden = needle !== "" && item.textContent.toLowerCase().indexOf(needle) < 0;
      });
    });
    list.parentNode.insertBefore(box, list);
  });
})();

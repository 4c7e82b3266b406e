terraform {
  cloud {}
}

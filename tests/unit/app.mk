# unit tests of src/app (command line)
